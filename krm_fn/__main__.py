"""`python -m krm_fn` runs the command-line entry point."""
from krm_fn.cli import main

main()
