package page

import _ "embed"

// Schema is the page JSON Schema (draft 2020-12), also published as schemas/page.schema.json.
//
//go:embed page.schema.json
var Schema []byte
