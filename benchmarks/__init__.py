"""Benchmarks: a deterministic corpus generator, the runner, and the MemberJunction-style baseline."""
