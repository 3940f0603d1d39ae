"""Sealed kernels. ``reference`` defines the bits; faster backends are measured against it."""
