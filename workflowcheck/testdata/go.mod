module github.com/harvestd/harvest

go 1.26.0
