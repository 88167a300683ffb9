from _common import Builder

b = Builder("zh")

# ---------------- same_fact ----------------
b.sf("punctuation",
     "用户希望所有回复都用简体中文。",
     "用户希望所有回复都用简体中文！",
     "用户希望所有回复都用简体中文")
b.sf("punctuation",
     "客户王先生只接受微信联系。",
     "客户王先生只接受微信联系.")
b.sf("punctuation",
     "账户 8830：每月 5 日自动扣款。",
     "账户 8830:每月 5 日自动扣款。",
     "账户８８３０：每月５日自动扣款。",
     comment="half-width colon; full-width digits without spaces")
b.sf("punctuation",
     "李娜对花生过敏，订餐时请注意。",
     "李娜对花生过敏,订餐时请注意.")
b.sf("punctuation",
     "周报请在周五 18:00 前提交。",
     "周报请在周五18:00前提交！")
b.sf("adverb",
     "陈总喜欢早上开会。",
     "陈总一直喜欢早上开会。")
b.sf("adverb",
     "用户不吃辣。",
     "用户真的不吃辣。",
     "用户确实不吃辣。")
b.sf("adverb",
     "财务部用金蝶 K/3 记账。",
     "财务部仍然用金蝶 K/3 记账。")
b.sf("adverb",
     "订单 52017 已经通过顺丰发出。",
     "订单 52017 确实已经通过顺丰发出。",
     "订单 52017 的确已经通过顺丰发出了。")
b.sf("adverb",
     "赵阿姨需要无障碍客房。",
     "赵阿姨一定需要无障碍客房。")
b.sf("filler",
     "备注：该客户是企业版用户。",
     "该客户是企业版用户。",
     "备注一下：该客户是企业版用户。")
b.sf("filler",
     "提醒一下，小刘每周四在上海办公室上班。",
     "小刘每周四在上海办公室上班。",
     "注意：小刘每周四在上海办公室上班。")
b.sf("filler",
     "请注意，工单 7720 是关于发票抬头填错的问题。",
     "工单 7720 是关于发票抬头填错的问题。")
b.sf("filler",
     "这位用户喜欢简短的回答。",
     "用户喜欢简短的回答。")
b.sf("filler",
     "周经理的生日是 3 月 8 日。",
     "顺便说一下，周经理的生日是 3 月 8 日。")
b.sf("word_order",
     "每周五，张伟在家办公。",
     "张伟每周五在家办公。")
b.sf("word_order",
     "所有退款都需要财务主管审批。",
     "财务主管需要审批所有退款。")
b.sf("word_order",
     "海外订单的物流统一用 DHL。",
     "物流方面，海外订单统一用 DHL。")
b.sf("synonym",
     "客户想取消订阅。",
     "客户想退订。",
     "客户要取消订阅。")
b.sf("synonym",
     "王磊骑自行车上班。",
     "王磊骑单车上班。")
b.sf("synonym",
     "供应商三月份的发票已经逾期。",
     "供应商三月份的发票已经过期未付。")
b.sf("synonym",
     "黄女士的航班从 T2 航站楼出发。",
     "黄女士的飞机从 T2 航站楼起飞。")
b.sf("paraphrase",
     "用户吃素。",
     "用户是素食者。",
     "用户不吃肉。",
     comment="不吃肉 is slightly weaker than 吃素")
b.sf("paraphrase",
     "账户 6015 的账期是 30 天。",
     "账户 6015 的发票开出后 30 天内付款。")
b.sf("paraphrase",
     "孙浩是移动端团队的负责人。",
     "移动端团队由孙浩负责。")

# ---------------- value_change ----------------
b.vc("word", "report frequency", "每周", "每月",
     "给刘总的销售报表每周发一次。",
     "给刘总的销售报表每月发一次。")
b.vc("word", "contact channel", "电话", "邮件",
     "客户希望通过电话联系。",
     "客户希望通过邮件联系。")
b.vc("word", "tone", "正式", "轻松",
     "回复郑先生时语气要正式。",
     "回复郑先生时语气要轻松。")
b.vc("word", "file format", "PDF", "Word",
     "人事部要求简历用 PDF 格式。",
     "人事部要求简历用 Word 格式。")
b.vc("word", "answer language", "英文", "中文",
     "回答马克的问题用英文。",
     "回答马克的问题用中文。")
b.vc("word", "time of day", "上午", "下午",
     "林老师习惯上午上课。",
     "林老师习惯下午上课。")
b.vc("word", "app theme", "深色", "浅色",
     "用户的 App 用深色模式。",
     "用户的 App 用浅色模式。")
b.vc("word", "shipping method", "普通", "加急",
     "账户 2290 的订单走普通快递。",
     "账户 2290 的订单走加急快递。")
b.vc("word", "ticket status", "处理中", "已关闭",
     "工单 4471 的状态是处理中。",
     "工单 4471 的状态是已关闭。")
b.vc("word", "minutes length", "详细", "越短越好",
     "许女士喜欢详细的会议纪要。",
     "许女士要求会议纪要越短越好。", reworded=True)
b.vc("word", "subscription plan", "基础版", "专业版",
     "客户使用的是基础版套餐。",
     "客户已升级到专业版。", reworded=True)
b.vc("word", "commute mode", "坐地铁", "开车",
     "小杨坐地铁上班。",
     "小杨改成开车上班了。", reworded=True)
b.vc("name", "city of residence", "杭州", "苏州",
     "周杰住在杭州，寄样品请寄到家里。",
     "周杰住在苏州，寄样品请寄到家里。")
b.vc("name", "manager", "高经理", "韩经理",
     "小吴的直属领导是高经理。",
     "小吴的直属领导是韩经理。")
b.vc("name", "prototyping tool", "Figma", "墨刀",
     "设计组用 Figma 做原型。",
     "设计组用墨刀做原型。",
     comment="spacing around the Latin-script name also changes")
b.vc("name", "account manager", "李强", "邓丽",
     "华远科技的客户经理是李强。",
     "华远科技的客户经理是邓丽。")
b.vc("name", "hotel chain", "汉庭", "全季",
     "何先生出差首选汉庭酒店。",
     "何先生出差改住全季酒店。", reworded=True)
b.vc("number", "team-building budget", "8000", "12000",
     "团建预算是 8000 元。",
     "团建预算是 12000 元。")
b.vc("number", "daily withdrawal limit", "5 万", "10 万",
     "账户 3356 的每日提现上限为 5 万元。",
     "账户 3356 的每日提现上限为 10 万元。")
b.vc("number", "stand-up time", "9:00", "9:30",
     "早会 9:00 开始。",
     "早会 9:30 开始。")
b.vc("number", "grandson's age", "6", "7",
     "吴阿姨的孙子 6 岁。",
     "吴阿姨的孙子已经满 7 岁了。", reworded=True)
b.vc("negation", "daily digest email", "想", "不想",
     "用户想收到每日摘要邮件。",
     "用户不想收到每日摘要邮件。")
b.vc("negation", "marketing SMS", "订阅了", "没有订阅",
     "客户订阅了营销短信。",
     "客户没有订阅营销短信。")
b.vc("negation", "call reminders", "希望", "不再需要",
     "邱先生希望每次通话前都收到提醒。",
     "邱先生不再需要通话前的提醒。", reworded=True)
b.vc("negation", "smoking", "抽烟", "戒烟",
     "老方抽烟。",
     "老方已经戒烟了。", reworded=True)

# ---------------- different_subject ----------------
b.ds("account number", "7731", "7713",
     "账户 7731 享受批量折扣。",
     "账户 7713 享受批量折扣。")
b.ds("order number", "２０２４０５１８０１", "２０２４０５１８１０",
     "订单号 ２０２４０５１８０１ 已发货。",
     "订单号 ２０２４０５１８１０ 还在备货。", changed=True)
b.ds("ticket id", "TK-3302", "TK-3320",
     "工单 TK-3302 是关于无法登录的问题。",
     "工单 TK-3320 是关于无法登录的问题。")
b.ds("invoice id", "INV-2024-0415", "INV-2024-0451",
     "发票 INV-2024-0415 已付清。",
     "发票 INV-2024-0451 已付清。")
b.ds("person name", "张丽", "章丽",
     "张丽喜欢用钉钉沟通。",
     "章丽喜欢用钉钉沟通。",
     comment="homophone surnames Zhang/Zhang")
b.ds("person name", "王建国", "王建军",
     "王建国住在成都。",
     "王建军住在重庆。", changed=True)
b.ds("company name", "华信贸易有限公司", "华鑫贸易有限公司",
     "华信贸易有限公司用银行转账付款。",
     "华鑫贸易有限公司用银行转账付款。")
b.ds("email address", "chen.yu@boyuan.cn", "chen.yu@boyuan.com",
     "chen.yu@boyuan.cn 负责接收对账单。",
     "chen.yu@boyuan.com 负责接收合同。", changed=True)
b.ds("url", "www.lvye.cn", "www.lvye.com.cn",
     "官网 www.lvye.cn 托管在阿里云上。",
     "官网 www.lvye.com.cn 托管在阿里云上。")
b.ds("training date", "５月３日", "５月１３日",
     "５月３日的培训在三楼会议室。",
     "５月１３日的培训在线上进行。", changed=True)
b.ds("statement date", "2024年3月5日", "2024年5月3日",
     "2024年3月5日的对账单有误。",
     "2024年5月3日的对账单有误。")
b.ds("employee number", "10233", "10323",
     "员工编号 10233 还剩 8 天年假。",
     "员工编号 10323 还剩 3 天年假。", changed=True)
b.ds("licence plate", "京A·5R21L", "京A·5R12L",
     "车牌京A·5R21L 需要年检。",
     "车牌京A·5R12L 需要年检。")
b.ds("branch", "南山分店", "福田分店",
     "南山分店周六九点开门。",
     "福田分店周六十点开门。", changed=True)
b.ds("contract number", "HT-2023-088", "HT-2023-080",
     "合同 HT-2023-088 到期自动续签。",
     "合同 HT-2023-080 到期自动续签。")
b.ds("project name", "星火", "星河",
     "“星火”项目由刘洋负责。",
     "“星河”项目由赵敏负责。", changed=True)
b.ds("sku", "6901-BK", "6901-WH",
     "商品 SKU 6901-BK 已售罄。",
     "商品 SKU 6901-WH 已售罄。")
b.ds("booking reference", "ＨＺ８８２１", "ＨＺ８８１２",
     "预订号 ＨＺ８８２１ 含早餐。",
     "预订号 ＨＺ８８１２ 不含早餐。", changed=True)
b.ds("meeting room", "长城", "黄河",
     "“长城”会议室没有投影仪。",
     "“黄河”会议室没有投影仪。")
b.ds("username", "wangfang", "wangfang01",
     "用户名 wangfang 有管理员权限。",
     "用户名 wangfang01 只有只读权限。", changed=True)
b.ds("department", "销售部", "法务部",
     "销售部的李静在家办公。",
     "法务部的李静在家办公。",
     comment="two people with the same name")
b.ds("phone number", "400-820-1234", "400-820-1243",
     "客服热线 400-820-1234 全天有人接听。",
     "客服热线 400-820-1243 全天有人接听。")
b.ds("child's name", "乐乐", "豆豆",
     "老陈的女儿乐乐对海鲜过敏。",
     "老陈的儿子豆豆对芒果过敏。", changed=True)
b.ds("hostname", "sh-db-07", "sh-db-17",
     "服务器 sh-db-07 在上海机房。",
     "服务器 sh-db-17 已下线。", changed=True)
b.ds("student number", "２０２１１５０３", "２０２１１５３０",
     "学号 ２０２１１５０３ 的学生选了高数。",
     "学号 ２０２１１５３０ 的学生选了线代。", changed=True)

# ---------------- complementary ----------------
b.co("小周", "小周会说日语，海外客户的电话可以转给他。", "小周会说韩语，海外客户的电话可以转给他。", values=["日语", "韩语"])
b.co("user", "用户爱喝普洱。", "用户爱喝美式咖啡。", values=["普洱", "美式咖啡"])
b.co("customer", "客户家里养了一只狗。", "客户家里养了一只猫。", values=["狗", "猫"])
b.co("QA team", "测试组用禅道管理缺陷。", "测试组用 TAPD 管理缺陷。", values=["禅道", "TAPD"])
b.co("马总", "马总去过迪拜，不需要再安排城市导览。", "马总去过新加坡，不需要再安排城市导览。", values=["迪拜", "新加坡"])
b.co("小何", "小何有教师资格证。", "小何有会计证。", values=["教师资格证", "会计证"])
b.co("shop", "这家店支持支付宝。", "这家店支持微信支付。", values=["支付宝", "微信支付"])
b.co("陆先生", "陆先生喜欢打羽毛球。", "陆先生喜欢打乒乓球。", values=["羽毛球", "乒乓球"])
b.co("王阿姨", "王阿姨对京剧感兴趣。", "王阿姨对书法感兴趣。", values=["京剧", "书法"])
b.co("logistics", "物流可以发往香港，时效三到五天。", "物流可以发往澳门，时效三到五天。", values=["香港", "澳门"])
b.co("叶老师", "叶老师教初二数学。", "叶老师教初二物理。", values=["数学", "物理"])
b.co("customer", "客户在用我们的 CRM 模块。", "客户在用我们的 ERP 模块。", values=["CRM", "ERP"])
b.co("小胡", "小胡喜欢用邮件沟通。", "小胡住在深圳。")
b.co("account 5512", "账户 5512 是企业版。", "账户 5512 有三个管理员。")
b.co("秦先生", "秦先生是左撇子。", "秦先生坐飞机要靠过道的座位。")
b.co("customer", "客户是一家做跨境电商的公司。", "客户要求发票抬头写全称。")
b.co("罗敏", "罗敏是质检组组长。", "罗敏周三下午要接孩子，不排会。")
b.co("user", "用户在备考雅思。", "用户晚上十点以后不看消息。")
b.co("ticket 6624", "工单 6624 分配给了小谢。", "工单 6624 只影响广州站点。")
b.co("萌萌", "萌萌的生日是 10 月 2 日。", "萌萌不喜欢吃香菜。")
b.co("test environment", "测试环境每天凌晨备份。", "测试环境的数据库是 MySQL 8.0。")
b.co("老金", "老金有两个孩子，寒暑假会请年假。", "老金开车上班。")
b.co("远航物流", "远航物流的采购对接人是杜明。", "远航物流总部在宁波。")
b.co("user", "用户平时写 Go。代码示例请用 Go。", "用户周末在咖啡馆打工。")
b.co("蒋女士", "蒋女士的护照 2026 年到期。", "蒋女士报销走市场部的成本中心。")

ITEMS = b.items
