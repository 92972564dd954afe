package main

import (
	"fmt"

	"github.com/wirelab/wirelab/engine/internal/version"
)

func init() {
	register("version", command{
		Summary: "print the engine version and git commit",
		Run: func(args []string) error {
			fmt.Println("wirelab-engine", version.String())
			return nil
		},
	})
}
