package page

import "github.com/wirelab/wirelab/engine/contract"

// Schema is the page JSON Schema (draft 2020-12): the contract's schemas/page.schema.json.
var Schema = contract.Raw(contract.Page)
