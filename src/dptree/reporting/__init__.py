"""HTML reports and plots of releases."""
