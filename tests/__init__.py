"""runnerkit's tests (a package, so test modules of the same name in different folders coexist)."""
