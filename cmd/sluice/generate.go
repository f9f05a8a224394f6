package main

// Regenerate man/sluice*.1 from this command tree (gen/mangen). The date is
// the pages' header date, fixed so that regenerating changes nothing.
//go:generate go run ../../gen/mangen -out ../../man -date 2026-12-01
