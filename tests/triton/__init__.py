"""Tests of runnerkit.triton against real tritonserver processes."""
