"""``python -m gpusim`` runs the command line."""

from gpusim.cli import main

main()
