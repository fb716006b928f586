"""The SQL path: knowledge, prompts, fixes, the guard, the read-only run, the vote, repairs and the answer from rows."""
