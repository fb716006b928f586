"""The QueryEngineTools the router chooses among: declared in a sources file, described for the router."""
