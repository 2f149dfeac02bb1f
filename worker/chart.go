package worker

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/feedworker/feedworker/history"
)

// chartView is the geometry of the console's two inline SVG charts: sends
// per hour (published, updated, failed, stacked) and the outbox depth,
// over the same 24 hours. Computed here so the template only draws.
type chartView struct {
	W, H, OH           float64 // width, bar chart height, outbox chart height
	Left, Right        float64 // plot area
	Top, Bottom        float64 // bar plot area
	OTop, OBottom      float64 // outbox plot area
	Bars               []chartBar
	XTicks             []chartTick
	YTicks             []chartTick
	OYTicks            []chartTick
	Outbox             string // polyline points
	OutboxDots         []chartDot
	Published, Updated int
	Failed             int
	Empty, NoOutbox    bool
}

type chartBar struct {
	X, W  float64
	Segs  []chartSeg
	Title string
}

type chartSeg struct {
	Y, H  float64
	Class string
}

type chartTick struct {
	X, Y  float64
	Label string
}

type chartDot struct {
	X, Y  float64
	Title string
}

func newChart(hours []history.Hour) chartView {
	c := chartView{W: 1200, H: 190, OH: 80, Left: 44, Right: 1188, Top: 12, Bottom: 160, OTop: 10, OBottom: 56}
	n := len(hours)
	if n == 0 {
		c.Empty, c.NoOutbox = true, true
		return c
	}
	top, otop := 0, 0
	for _, h := range hours {
		top = max(top, h.Published+h.Updated+h.Failed)
		otop = max(otop, h.Outbox)
		c.Published += h.Published
		c.Updated += h.Updated
		c.Failed += h.Failed
	}
	c.Empty = top == 0
	ymax := niceMax(top)
	slot := (c.Right - c.Left) / float64(n)
	scale := (c.Bottom - c.Top) / float64(ymax)
	for i, h := range hours {
		x := c.Left + float64(i)*slot
		start := time.UnixMilli(h.Start).UTC()
		bar := chartBar{X: x + slot*0.15, W: slot * 0.7,
			Title: fmt.Sprintf("%s–%s UTC: %d published, %d updated, %d failed", start.Format("Jan 2 15:04"),
				start.Add(time.Hour).Format("15:04"), h.Published, h.Updated, h.Failed)}
		y := c.Bottom
		for _, s := range []struct {
			n     int
			class string
		}{{h.Published, "pub"}, {h.Updated, "upd"}, {h.Failed, "fail"}} {
			if s.n == 0 {
				continue
			}
			hgt := float64(s.n) * scale
			y -= hgt
			bar.Segs = append(bar.Segs, chartSeg{Y: round1(y), H: round1(hgt), Class: s.class})
		}
		bar.X, bar.W = round1(bar.X), round1(bar.W)
		c.Bars = append(c.Bars, bar)
		if start.Hour()%6 == 0 || i == n-1 {
			label := start.Format("15:04")
			if i == n-1 {
				label = "now"
			}
			c.XTicks = append(c.XTicks, chartTick{X: round1(x + slot/2), Label: label})
		}
	}
	for _, v := range []float64{0, float64(ymax) / 2, float64(ymax)} {
		c.YTicks = append(c.YTicks, chartTick{Y: round1(c.Bottom - v*scale), Label: fmt.Sprintf("%g", v)})
	}
	// The outbox line joins the hours that have a sample.
	omax := niceMax(otop)
	oscale := (c.OBottom - c.OTop) / float64(omax)
	var pts []string
	for i, h := range hours {
		if h.Outbox < 0 {
			continue
		}
		x, y := round1(c.Left+(float64(i)+0.5)*slot), round1(c.OBottom-float64(h.Outbox)*oscale)
		pts = append(pts, fmt.Sprintf("%g,%g", x, y))
		c.OutboxDots = append(c.OutboxDots, chartDot{X: x, Y: y,
			Title: fmt.Sprintf("%s UTC: outbox %d", time.UnixMilli(h.Start).UTC().Format("Jan 2 15:04"), h.Outbox)})
	}
	c.Outbox = strings.Join(pts, " ")
	c.NoOutbox = len(pts) == 0
	for _, v := range []int{0, omax} {
		c.OYTicks = append(c.OYTicks, chartTick{Y: round1(c.OBottom - float64(v)*oscale), Label: fmt.Sprint(v)})
	}
	return c
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten (at least 2, so
// the middle tick is a whole number).
func niceMax(v int) int {
	if v <= 2 {
		return 2
	}
	p := math.Pow(10, math.Floor(math.Log10(float64(v))))
	for _, m := range []float64{1, 2, 5, 10} {
		if float64(v) <= m*p {
			return int(m * p)
		}
	}
	return v
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }
