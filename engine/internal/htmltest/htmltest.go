// Package htmltest reads an HTML document the way tests check the pages the engine serves: the
// src and href attributes of its tags, by the HTML tokenizer of golang.org/x/net/html — not by
// the engine's own reference scanner (internal/refscan), which those tests check against.
package htmltest

import (
	"bytes"
	"io"

	"golang.org/x/net/html"
)

// Refs returns the values of every src and href attribute of doc in document order, how many
// comments doc holds, and the tokenizer's error if it stopped before the end of doc.
func Refs(doc []byte) (refs []string, comments int, err error) {
	z := html.NewTokenizer(bytes.NewReader(doc))
	for {
		switch z.Next() {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				return refs, comments, z.Err()
			}
			return refs, comments, nil
		case html.CommentToken:
			comments++
		case html.StartTagToken, html.SelfClosingTagToken:
			for {
				k, v, more := z.TagAttr()
				if string(k) == "src" || string(k) == "href" {
					refs = append(refs, string(v))
				}
				if !more {
					break
				}
			}
		}
	}
}
