package taskgraph

import (
	"fmt"
	"html"
	"strings"
	"unicode/utf8"

	"github.com/fuelsync/fuelsync/base/safetext"
)

// The picture's measures, in pixels. A label is 12 px monospace, a badge's
// 10 px: their widths are estimated from the count of characters, a little
// over what a browser's monospace fonts take (DejaVu Sans Mono: 7.22 and
// 6.02 px a character), which the browser test checks.
const (
	// MaxWidth is the width a picture keeps within when it can: a
	// 1,400 px wide screen, less the page's margins.
	MaxWidth = 1320

	labelFont, badgeFont = 12, 10
	labelChar, badgeChar = 7.4, 6.2 // estimated width of a character
	boxPadX              = 6        // left and right of a box's content
	labelRow             = 20       // a box's height without badges
	badgeRow             = 17       // the height the badges add
	badgeH, badgePadX    = 14, 4
	badgeGap             = 4
	noteRow              = 18
)

var spacing = Spacing{MaxWidth: MaxWidth, Pad: 8, GapX: 12, SlotX: 6, GapY: 36, BandHead: 18}

// Picture is a drawn graph.
type Picture struct {
	SVG           string
	Width, Height int
	Boxes         int
}

// Draw selects what the options keep of g, lays it out and draws it as an
// SVG element. Every name is escaped.
func Draw(g *Graph, o Options) Picture {
	v := selectView(g, o)
	boxes := make([]Box, len(v.boxes))
	for i, b := range v.boxes {
		boxes[i] = Box{W: b.width(), H: b.height(), Band: b.band}
	}
	sp := spacing
	v.heads = len(v.bands) > 1 || len(v.bands) == 1 && v.bands[0] != ""
	if !v.heads {
		sp.BandHead = 0
	}
	l := Place(boxes, v.edges, sp)
	return v.svg(l, o)
}

// textWidth estimates the width of n characters of a font.
func textWidth(s string, char float64) int {
	return int(float64(utf8.RuneCountInString(s))*char + 0.999)
}

func (b *drawnBox) label() string { return safetext.Cut(b.id, maxLabel) }

// badgesWidth is the width of a box's row of badges.
func (b *drawnBox) badgesWidth() int {
	w := 0
	for i, bg := range b.badges {
		if i > 0 {
			w += badgeGap
		}
		w += textWidth(bg.text, badgeChar) + 2*badgePadX
	}
	return w
}

func (b *drawnBox) width() int {
	return max(textWidth(b.label(), labelChar), b.badgesWidth()) + 2*boxPadX
}

func (b *drawnBox) height() int {
	if len(b.badges) > 0 {
		return labelRow + badgeRow
	}
	return labelRow
}

// fill is a status's colour (a report's or a run's statuses).
func fill(status string) string {
	switch status {
	case "success", "succeeded":
		return "#d8f0d8"
	case "failed":
		return "#f6c8c8"
	case "dep_failed":
		return "#f8e0c8"
	case "running":
		return "#fff2c0"
	case "skipped":
		return "#eeeeee"
	}
	return "#ffffff"
}

// svg draws the laid out view: the bands, the edges, the boxes with their
// badges, and the notes below.
func (v *view) svg(l *Layout, o Options) Picture {
	width, height := max(l.Width, 240), l.Height+len(v.notes)*noteRow
	for _, n := range v.notes {
		width = max(width, textWidth(n, labelChar)+2*spacing.Pad)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="taskgraph" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="task graph of node %s">`,
		width, height, width, height, html.EscapeString(o.Node))
	b.WriteString(`<defs><marker id="tg-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0L10,5L0,10z" fill="#777"/></marker></defs>`)
	v.drawBands(&b, l, width)
	for _, p := range l.Paths {
		if len(p) > 0 {
			fmt.Fprintf(&b, `<path class="edge" d="%s" fill="none" stroke="#8a8a8a" marker-end="url(#tg-arrow)"/>`, pathData(p))
		}
	}
	for i := range v.boxes {
		v.drawBox(&b, i, l, o)
	}
	for i, n := range v.notes {
		fmt.Fprintf(&b, `<text class="note" x="%d" y="%d" font-family="monospace" font-size="%d">%s</text>`,
			spacing.Pad, l.Height+i*noteRow+13, labelFont, html.EscapeString(n))
	}
	b.WriteString(`</svg>`)
	return Picture{SVG: b.String(), Width: width, Height: height, Boxes: len(v.boxes)}
}

// drawBands draws each used band as a strip, alternately shaded, with its
// stage's name in its head.
func (v *view) drawBands(b *strings.Builder, l *Layout, width int) {
	k := 0
	for i, s := range l.Bands {
		if !s.Used || i >= len(v.bands) {
			continue
		}
		shade := "#f3f6fa"
		if k%2 == 1 {
			shade = "#fbfbf4"
		}
		k++
		fmt.Fprintf(b, `<rect class="band" x="0" y="%d" width="%d" height="%d" fill="%s"/>`, s.Y0, width, s.Y1-s.Y0, shade)
		name := "no stage"
		if v.bands[i] != "" {
			name = "after stage " + v.bands[i]
		}
		if v.heads {
			fmt.Fprintf(b, `<text class="band" x="%d" y="%d" font-family="monospace" font-size="%d" fill="#456">%s</text>`,
				spacing.Pad, s.Head+13, labelFont, html.EscapeString(name))
		}
	}
}

// drawBox draws box i: a link to its focus when o.Link gives one, its
// tooltip, its rectangle coloured by status, its label and its badges.
func (v *view) drawBox(b *strings.Builder, i int, l *Layout, o Options) {
	bx := &v.boxes[i]
	x, y, w, h := l.X[i], l.Y[i], bx.width(), bx.height()
	href := ""
	if o.Link != nil {
		href = o.Link(bx.id)
	}
	if href != "" {
		fmt.Fprintf(b, `<a href="%s">`, html.EscapeString(href))
	}
	stroke, sw, textFill := "#555", "1", "#000"
	switch {
	case bx.focus:
		stroke, sw = "#0550ae", "3"
	case bx.status == "failed":
		stroke, sw = "#b00", "2"
	}
	if bx.kind == "skipped" {
		textFill = "#777"
	}
	fmt.Fprintf(b, `<g class="task"><title>%s</title><rect x="%d" y="%d" width="%d" height="%d" rx="4" fill="%s" stroke="%s" stroke-width="%s"/>`,
		html.EscapeString(bx.title), x, y, w, h, fill(bx.status), stroke, sw)
	fmt.Fprintf(b, `<text class="label" x="%d" y="%d" font-family="monospace" font-size="%d" fill="%s">%s</text>`,
		x+boxPadX, y+14, labelFont, textFill, html.EscapeString(bx.label()))
	bxX := x + boxPadX
	for _, bg := range bx.badges {
		bw := textWidth(bg.text, badgeChar) + 2*badgePadX
		fmt.Fprintf(b, `<g class="badge"><title>%s</title><rect x="%d" y="%d" width="%d" height="%d" rx="7" fill="#e4ecf7" stroke="#7a92b8"/><text x="%d" y="%d" font-family="monospace" font-size="%d" fill="#234">%s</text></g>`,
			html.EscapeString(bg.title), bxX, y+labelRow, bw, badgeH, bxX+badgePadX, y+labelRow+10, badgeFont, html.EscapeString(bg.text))
		bxX += bw + badgeGap
	}
	b.WriteString(`</g>`)
	if href != "" {
		b.WriteString(`</a>`)
	}
}

// pathData writes a route (Layout.Paths): its even segments straight, its
// odd ones curves with vertical ends.
func pathData(p []Point) string {
	var b strings.Builder
	fmt.Fprintf(&b, "M%d,%d", p[0].X, p[0].Y)
	for k := 0; k+1 < len(p); k++ {
		a, c := p[k], p[k+1]
		if k%2 == 0 {
			if c != a {
				fmt.Fprintf(&b, "L%d,%d", c.X, c.Y)
			}
			continue
		}
		mid := (a.Y + c.Y) / 2
		fmt.Fprintf(&b, "C%d,%d %d,%d %d,%d", a.X, mid, c.X, mid, c.X, c.Y)
	}
	return b.String()
}
