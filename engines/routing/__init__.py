"""Choosing the source: the router over the tools it receives, and the selectors that score every source."""
