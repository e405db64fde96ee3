"""dsh-memory: review and govern what an AI coding agent remembers."""

__version__ = "0.1.0"
