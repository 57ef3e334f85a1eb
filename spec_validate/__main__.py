from spec_validate.cli import console

console()
