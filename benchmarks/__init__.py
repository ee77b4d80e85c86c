"""Reproducible benchmarks of the Taskloom engine against peers (not timed tests).

Run ``python -m benchmarks.engine_bench`` from the project root; see README.md here.
"""
