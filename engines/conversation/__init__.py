"""Conversations: the check and the condense step that make a follow-up standalone, the previous turn a path can build on, and the saved turns."""
