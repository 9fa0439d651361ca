"""govern: keeps MySQL and MariaDB servers honest about their workload.

The library is the product; the ``govern`` command is a thin Click shell over it.
"""

__version__ = "0.1.0"
