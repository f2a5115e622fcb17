"""From user data to leaf histograms: inputs, public domains, contribution bounding, engines."""
