from dtkg.cli import main

raise SystemExit(main())
