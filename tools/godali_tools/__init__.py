"""godali's tools, kept out of the godali wheel: the throughput benchmarks (bench,
bench-remote), the synthetic data set generator (make_dataset, with the photographs it
cuts its images from) and the cloud-storage emulators the remote tests and bench-remote
start. ``python -m godali_tools {bench|bench-remote|make_dataset} ...``; from a checkout,
with ``PYTHONPATH=python:tools`` (or ``pip install ./tools``)."""
