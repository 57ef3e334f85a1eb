from validator.cli import console

console()
