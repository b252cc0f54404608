"""Output: kapp's tables, progress lines and messages. Stages return data; this renders it."""
