"""The pure core: values, the information boundary, detectors, policies, the EvalStop wrapper.

No I/O, no clock, no global randomness; imports only itself (``tests/repo/test_layers.py``).
"""
