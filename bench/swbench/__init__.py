"""The modules of the skillwalker-data benchmark (entry point: ``bench/run.py``)."""
