from space.cli import main

raise SystemExit(main())
