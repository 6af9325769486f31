"""``python -m gpusim`` runs the command line."""

from gpusim.console import main

main()
