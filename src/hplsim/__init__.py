"""hplsim: predict High-Performance Linpack by emulating HPL on SimGrid/SMPI."""

__version__ = "0.1.0"
