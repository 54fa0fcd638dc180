//go:build !race

package main

// raceDetector is set when the tests (and the serve they run, the same
// binary) are built with -race, whose shadow memory multiplies a process's
// RSS.
const raceDetector = false
