module github.com/wirelab/wirelab/engine

go 1.26.8
