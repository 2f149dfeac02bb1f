package deps
import (
_ "github.com/mmcdole/gofeed"
_ "github.com/PuerkitoBio/goquery"
_ "github.com/redis/go-redis/v9"
_ "golang.org/x/oauth2/clientcredentials"
_ "github.com/prometheus/client_golang/prometheus"
_ "github.com/prometheus/client_golang/prometheus/testutil"
_ "golang.org/x/time/rate"
_ "github.com/microcosm-cc/bluemonday"
_ "go.yaml.in/yaml/v3"
_ "github.com/fsnotify/fsnotify"
_ "github.com/expr-lang/expr"
_ "go.etcd.io/bbolt"
_ "golang.org/x/net/html/charset"
_ "github.com/google/go-cmp/cmp"
)
