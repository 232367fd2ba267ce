from kvswitch_gui.app import main

raise SystemExit(main())
