//go:build race

package client

// raceDetector: the test binary was built with -race (the Makefile's go-race phase).
const raceDetector = true
