// Package redact takes credentials out of text before it reaches a log, a
// status, an error or a page: the user:password@ (or token@) of a URL, alone
// (URL) or quoted anywhere in a message (Text). The source, the controller and
// the server all say URLs of the followed repository, so it is a package of its
// own below them. It never decides whether a URL is allowed (the state URL
// refuses credentials outright: state.ParseURL); it only hides them.
package redact
