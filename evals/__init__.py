"""The evaluation harness: `ragrouter eval SUITE`, each suite measuring ours beside LlamaIndex's stock pieces."""
