module github.com/keyward/keyward/deploy/ferretdb

go 1.26

require github.com/FerretDB/FerretDB v1.24.0 // indirect
