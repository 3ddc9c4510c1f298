"""Tests of the benchmark's own code (bench/), which the service never imports."""
