"""Sealed kernels, the lowest floor: they import only ``topos.ir`` and ``topos.errors``. ``reference`` defines the bits; faster kernels are measured against it."""
