module burn

go 1.19
