package main

import (
	_ "github.com/FerretDB/FerretDB/ferretdb"
)

func main() {}
