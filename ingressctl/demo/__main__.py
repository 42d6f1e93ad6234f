"""`python -m ingressctl.demo`: the demo that `make run` starts (see `ingressctl.demo.run`)."""

from ingressctl.demo.run import main

raise SystemExit(main())
