"""Scope rules: passages about other years or other numbered things than the question names are set aside."""
