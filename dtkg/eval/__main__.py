from dtkg.eval.cli import main

raise SystemExit(main())
