package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"strconv"
)

// The chart: one panel per model; in each, a group of bars per N (widejit wide, widejit
// sequential, torch loop, torch best batched), heights on a log scale of milliseconds.

var (
	chartBG     = color.RGBA{255, 255, 255, 255}
	chartInk    = color.RGBA{30, 30, 30, 255}
	chartGrid   = color.RGBA{225, 225, 225, 255}
	seriesColor = []color.RGBA{
		{31, 90, 180, 255},   // widejit wide
		{140, 180, 230, 255}, // widejit sequential
		{240, 150, 40, 255},  // torch loop
		{200, 40, 40, 255},   // torch best batched
	}
	seriesName = []string{"widejit wide", "widejit seq", "torch loop", "torch best batched"}
)

const (
	panelW, panelH = 560, 340
	chartTop       = 70 // title and legend
	textScale      = 2
)

// cellSeries returns the cell's four values in ms (NaN where absent).
func cellSeries(cl *cell) [4]float64 {
	v := [4]float64{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	if cl.Wide != nil {
		v[0] = cl.Wide.MedianMS
	}
	if cl.Seq != nil {
		v[1] = cl.Seq.MedianMS
	}
	if cl.TorchLoop != nil {
		v[2] = cl.TorchLoop.MedianMS
	}
	if cl.TorchBestMS != nil {
		v[3] = *cl.TorchBestMS
	}
	return v
}

// renderChart draws the report's chart as PNG bytes.
func renderChart(rep *report) ([]byte, error) {
	models := rep.Models
	cols := min(3, max(1, len(models)))
	rows := max(1, (len(models)+cols-1)/cols)
	img := image.NewRGBA(image.Rect(0, 0, cols*panelW, chartTop+rows*panelH))
	draw.Draw(img, img.Bounds(), &image.Uniform{chartBG}, image.Point{}, draw.Src)
	drawText(img, 12, 10, "zoo on the cpu: ms per run of all n models (log scale, lower is better)", textScale, chartInk)
	x := 12
	for i, name := range seriesName {
		fillRect(img, x, 40, 16, 16, seriesColor[i])
		drawText(img, x+22, 41, name, textScale, chartInk)
		x += 22 + textWidth(name, textScale) + 28
	}
	for i, model := range models {
		var cells []*cell
		for _, cl := range rep.Cells {
			if cl.Model == model {
				cells = append(cells, cl)
			}
		}
		r := image.Rect((i%cols)*panelW, chartTop+(i/cols)*panelH, (i%cols+1)*panelW, chartTop+(i/cols+1)*panelH)
		drawPanel(img, r, model, cells)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func drawPanel(img *image.RGBA, r image.Rectangle, model string, cells []*cell) {
	drawText(img, r.Min.X+70, r.Min.Y+6, model, textScale, chartInk)
	plot := image.Rect(r.Min.X+70, r.Min.Y+30, r.Max.X-20, r.Max.Y-40)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, cl := range cells {
		for _, v := range cellSeries(cl) {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		drawText(img, plot.Min.X, plot.Min.Y+20, "no data", textScale, chartInk)
		return
	}
	dLo, dHi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dHi <= dLo {
		dHi = dLo + 1
	}
	yOf := func(v float64) int {
		f := (math.Log10(v) - dLo) / (dHi - dLo)
		return plot.Max.Y - int(math.Round(f*float64(plot.Dy())))
	}
	for d := dLo; d <= dHi; d++ {
		y := yOf(math.Pow(10, d))
		fillRect(img, plot.Min.X, y, plot.Dx(), 1, chartGrid)
		label := strconv.FormatFloat(math.Pow(10, d), 'f', -1, 64)
		drawText(img, plot.Min.X-8-textWidth(label, textScale), y-glyphH*textScale/2, label, textScale, chartInk)
	}
	fillRect(img, plot.Min.X, plot.Min.Y, 1, plot.Dy(), chartInk)
	fillRect(img, plot.Min.X, plot.Max.Y, plot.Dx(), 1, chartInk)
	if len(cells) == 0 {
		return
	}
	groupW := plot.Dx() / len(cells)
	barW := max(2, (groupW-16)/4)
	for gi, cl := range cells {
		gx := plot.Min.X + gi*groupW + (groupW-4*barW)/2
		for si, v := range cellSeries(cl) {
			if !(v > 0) {
				continue
			}
			top := yOf(v)
			fillRect(img, gx+si*barW, top, barW-2, plot.Max.Y-top, seriesColor[si])
		}
		label := fmt.Sprintf("n=%d", cl.N)
		drawText(img, plot.Min.X+gi*groupW+(groupW-textWidth(label, textScale))/2, plot.Max.Y+8, label, textScale, chartInk)
	}
}

func fillRect(img *image.RGBA, x, y, w, h int, c color.Color) {
	draw.Draw(img, image.Rect(x, y, x+w, y+h), &image.Uniform{c}, image.Point{}, draw.Src)
}
