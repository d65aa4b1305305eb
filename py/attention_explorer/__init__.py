"""Attention Explorer: transformer self-attention computed live, explained.

The same package runs under CPython (tests, build-time pre-rendering) and under
Pyodide in the reader's browser (worker.py). Everything but worker.py (and
worker_main.py, its main script) is pure.
"""
