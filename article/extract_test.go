package article

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestExtractSelector(t *testing.T) {
	t.Parallel()
	page := `<html><body><div class="header">HEAD</div>
<div class="post"><p>One</p><div class="ad-slot">AD</div><div class="share-bar">SHARE</div><div class="shadow-box"><p>Two</p></div>
<script>SCRIPT</script><form>FORM</form><p hidden>HIDDEN</p></div>
<div class="post"><p>Three</p></div></body></html>`
	u, _ := url.Parse("https://example.com/a")
	got, err := Extract([]byte(page), u, ".post, .post p")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"One", "Two", "Three"} {
		if !strings.Contains(got, want) {
			t.Errorf("extract lacks %q: %s", want, got)
		}
	}
	for _, bad := range []string{"HEAD", "AD<", "SHARE", "SCRIPT", "FORM", "HIDDEN"} {
		if strings.Contains(got, bad) {
			t.Errorf("extract holds %q: %s", bad, got)
		}
	}
	if n := strings.Count(got, "One"); n != 1 {
		t.Errorf("nested matches repeated the text %d times: %s", n, got)
	}
	if _, err := Extract([]byte(page), u, "article"); !errors.Is(err, ErrNoMatch) {
		t.Errorf("missing selector: %v, want ErrNoMatch", err)
	}
	if _, err := Extract([]byte(`<div class="post"><div class="ad">x</div></div>`), u, ".post"); !errors.Is(err, ErrNoContent) {
		t.Errorf("empty selection: %v, want ErrNoContent", err)
	}
}

func TestIsBoilerplate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"ad-slot": true, "social share": true, "cookie_banner": true, "post-comments": true, "newsletter": true,
		"header": false, "shadow": false, "heading": false, "story-body": false, "loaded": false, "": false,
	} {
		if got := isBoilerplate(in); got != want {
			t.Errorf("isBoilerplate(%q) = %v, want %v", in, got, want)
		}
	}
}
