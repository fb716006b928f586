"""What the router and the paths both match a question against: schema terms and values, a collection's nearest chunk."""
