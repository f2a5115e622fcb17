"""The b-ary range tree (Smith & Ullman 2021; Honaker 2015): layout, budget allocation, release, group-by."""
