module whale

go 1.26.8

require (
	github.com/corentings/chess/v2 v2.3.2
	github.com/spf13/cobra v1.10.2
	go.etcd.io/bbolt v1.4.3
	go.starlark.net v0.0.0-20260908191801-89a6a09411d5
	golang.org/x/sys v0.50.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/exp v0.0.0-20250128182459-e0ece0dbea4c // indirect
	golang.org/x/sync v0.12.0 // indirect
)
