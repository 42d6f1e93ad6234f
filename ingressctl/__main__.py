"""`python -m ingressctl`: the same entry point as the `ingressctl` console script."""

from ingressctl.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
