"""Reliability and security suite: concurrency, crashes, faults, bad bytes, a model test,
hostile paths and forgetting. See docs/reliability.md for what each test proves and the figures.
"""
