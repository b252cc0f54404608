"""`kapply package`: kctrl's `package` commands (repositories, available packages, installs) for kapply's packaging
resources (`packaging.kapply.dev`, docs/packages.md). The command tree is declared in `commands`; each command group
has its module (`repository`, `available`, `installed`), over pure parts (`sources`, `created`, `schema`,
`tailing`) and the cluster calls they share (`common`, `waiting`)."""
