"""What every route does to write an answer: the cited answer engine, its prompts, streaming, the output guard and declines."""
